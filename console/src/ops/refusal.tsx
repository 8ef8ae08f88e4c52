/** A refusal of the operations API in words: its code and message. */
import { OpsError } from './graphql.ts';

export function OpsRefusal({ error, action }: { error: unknown; action?: string }) {
  const prefix = action ? `${action} failed: ` : '';
  return (
    <div className="refusal" role="alert">
      <p>
        {prefix}
        {error instanceof OpsError ? (
          <>
            <code className="code">{error.code}</code> {error.message}
          </>
        ) : error instanceof Error ? (
          error.message
        ) : (
          String(error)
        )}
      </p>
    </div>
  );
}
