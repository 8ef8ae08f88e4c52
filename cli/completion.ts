/**
 * `wsctl completion bash|zsh|fish` prints a completion script; the script asks
 * `wsctl __complete <words typed so far>` for the candidates, read from the commander tree itself,
 * so completion always knows every command and option of the wsctl that answers.
 */
import type { Command } from 'commander';
import { CliError, type CliContext } from './context.ts';

const SCRIPTS: Record<string, string> = {
  bash: `_wsctl() {
  local IFS=$'\\n'
  COMPREPLY=($(compgen -W "$(wsctl __complete "\${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null)" -- "\${COMP_WORDS[COMP_CWORD]}"))
}
complete -o default -F _wsctl wsctl`,
  zsh: `#compdef wsctl
_wsctl() {
  local -a candidates
  candidates=(\${(f)"$(wsctl __complete \${words[2,CURRENT-1]} 2>/dev/null)"})
  compadd -a candidates
}
compdef _wsctl wsctl`,
  fish: `complete -c wsctl -f -a '(wsctl __complete (commandline -opc)[2..-1])'`,
};

/** The subcommands and long options that may follow `words`. */
function candidates(program: Command, words: string[]): string[] {
  let command = program;
  for (const word of words) {
    const next = command.commands.find((sub) => sub.name() === word || sub.aliases().includes(word));
    if (next) command = next;
  }
  const options = [...command.options, ...(command === program ? [] : program.options)]
    .map((option) => option.long)
    .filter((long): long is string => long !== undefined);
  return [...command.commands.map((sub) => sub.name()).filter((name) => !name.startsWith('__')), ...options];
}

export function registerCompletion(program: Command, context: () => CliContext): void {
  program
    .command('completion <shell>')
    .description('prints a completion script: bash (source <(wsctl completion bash)), zsh, fish')
    .action((shell: string) => {
      const script = SCRIPTS[shell];
      if (!script) throw new CliError('invalid_arguments', 'shell must be one of bash, zsh, fish.', 2);
      context().output.out(script);
    });
  program
    .command('__complete [words...]', { hidden: true })
    .allowUnknownOption()
    .action((words: string[] = []) => {
      for (const candidate of candidates(program, words)) context().output.out(candidate);
    });
}
