// ESLint (flat config): typescript-eslint's recommended rules, no import cycles between modules,
// a line length a reviewer can read side by side, and functions under 80 lines. `npm run lint`; .ci/run runs it.
import js from '@eslint/js';
import stylistic from '@stylistic/eslint-plugin';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // sdk/src/openapi.ts is generated from openapi.json.
  { ignores: ['sdk/src/openapi.ts', '**/dist/**', '**/dist-test/**', '**/node_modules/**', 'bench/results/**', 'types/**', '.test-tmp/**', 'data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.js', '**/*.mjs'],
    plugins: { 'import-x': importX, '@stylistic': stylistic },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver({ noWarnOnMultipleProjects: true, project: ['tsconfig.json', 'sdk/tsconfig.json', 'examples/website/tsconfig.json'] })],
    },
    languageOptions: { globals: globals.node },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      'import-x/no-cycle': 'error',
      '@stylistic/max-len': ['error', { code: 160, tabWidth: 2, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true }],
      // `_name` marks a parameter a signature needs but the body does not use.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  // Functions a reader can hold at once. Tests are exempt: a describe block is a list of cases.
  {
    files: ['src/**/*.ts', 'sdk/src/**/*.ts', 'examples/website/src/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.js'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }] },
  },
  // TypeScript checks names itself (typescript-eslint's advice).
  { files: ['**/*.ts'], rules: { 'no-undef': 'off' } },
  // Scripts that run in the browser: the dashboard's and the example site's.
  { files: ['src/dashboard/static/**/*.js', 'examples/website/public/**/*.js'], languageOptions: { globals: globals.browser } },
  // Tests and benchmarks read JSON answers whose shape the assertion is about.
  { files: ['test/**/*.ts', 'bench/**/*.ts', 'sdk/test/**/*.ts', 'examples/website/test/**/*.ts'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
);
