/**
 * `wsctl api openapi|openrpc`: the service's own descriptions of itself (docs/api.md,
 * "Machine-readable documents"), printed as JSON (or YAML with `-o yaml`). They are public: no
 * profile credential is sent, only the profile's address is used.
 */
import type { Command } from 'commander';
import type { CliContext } from './context.ts';
import { printRecord } from './input.ts';
import { failure } from './transfers.ts';

export function registerDocuments(program: Command, context: () => CliContext): void {
  const api = program.command('api').description("the service's API documents");
  for (const [name, what] of [
    ['openapi', 'the OpenAPI 3.1 document of the REST routes'],
    ['openrpc', 'the OpenRPC document of the WebSocket commands'],
  ] as const) {
    api
      .command(name)
      .description(what)
      .action(async () => {
        const ctx = context();
        const profile = await ctx.profile();
        const response = await fetch(new URL(`/v1/${name}.json`, profile.url));
        if (!response.ok) await failure(response);
        printRecord(ctx, await response.json());
      });
  }
}
