#!/usr/bin/env node
// The `bin` of package.json: npm links it as `wsctl`. The CLI is TypeScript run by Node 24's
// type stripping (the `node` package of the dependencies, first on PATH under npm and npx).
const [major] = process.versions.node.split('.').map(Number);
if (major < 24) {
  process.stderr.write(
    `error: node_version: wsctl needs Node 24 or later (this is ${process.version}); run it with npx wsctl.\n`,
  );
  process.exit(2);
}
const { main } = await import('./wsctl.ts');
process.exitCode = await main(process.argv.slice(2));
