/** The five limits `create_execution` resolves once; the execution keeps them until it ends. */
export interface RunLimits {
  'workflow.processor_runs_per_execution': number;
  'workflow.execution_seconds': number;
  'workflow.code_run_seconds': number;
  'workflow.code_imports': string[];
  'workflow.session_objects_per_session': number;
}
