// ESLint (flat config): typescript-eslint's recommended rules, plus the type-checked rules that
// catch a promise nobody awaits or one passed where a callback's result is ignored — the bugs a
// type check alone lets through in code this asynchronous. Formatting is prettier's (npm run lint).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['node_modules/', 'client/dist/', 'console/dist/', '.data/', '.tap/', '.scratch/', 'sandbox/vetted/*.js'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // tap's t.test() registers a subtest the runner itself waits for.
          allowForKnownSafePromises: [{ from: 'package', package: '@tapjs/core', name: 'PromiseWithSubtest' }],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // `_`-prefixed names are deliberately unused (a callback's position, a rest sibling).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Tests and benches read the service's JSON answers loosely; the API document's response check
    // (test/helpers/app.ts) holds the answers to their shapes, not these casts.
    files: ['test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Plain JavaScript entry points (the CLI's shim, this file) run on Node, without type information.
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: 'readonly', console: 'readonly' },
    },
  },
);
