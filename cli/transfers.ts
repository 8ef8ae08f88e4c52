/** Binary transfers over REST (models, session files): a progress line, and a refusal read from the body. */
import { Transform } from 'node:stream';
import { ApiError } from '../client/src/index.ts';
import { CliError, type CliContext } from './context.ts';

/** A progress line for a transfer: `model.onnx  12.0 MiB / 40.0 MiB  30%`. */
export function transferProgress(ctx: CliContext, label: string, total: number | undefined): Transform {
  let done = 0;
  let shown = -1;
  const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      done += chunk.length;
      const percent = total ? Math.floor((done / total) * 100) : -1;
      // Redrawn at most once per percent (a terminal), so a non-terminal gets at most 101 lines.
      if (percent !== shown || total === undefined) {
        if (total === undefined ? ctx.output.interactive : true)
          ctx.output.progress(`${label}  ${mib(done)}${total ? ` / ${mib(total)}  ${percent}%` : ''}`);
        shown = percent;
      }
      callback(null, chunk);
    },
    flush(callback) {
      ctx.output.endProgress();
      callback();
    },
  });
}

export async function failure(response: Response): Promise<never> {
  const body = (await response.json().catch(() => null)) as { error?: string; message?: string } | null;
  if (body?.error) throw new ApiError(body as never, response.status);
  throw new CliError('internal_error', `The service answered HTTP ${response.status}.`);
}
