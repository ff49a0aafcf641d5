// JavaScript Standard Style (no semicolons, 2 spaces, single quotes) through
// ESLint's recommended rules and the stylistic plugin's equivalent preset.
import js from '@eslint/js'
import stylistic from '@stylistic/eslint-plugin'
import globals from 'globals'

export default [
  { ignores: ['node_modules/**', '.h3lens/**', 'docs/**', 'web/vendor/**'] },
  js.configs.recommended,
  stylistic.configs.customize({ indent: 2, quotes: 'single', semi: false, jsx: false, braceStyle: '1tbs', commaDangle: 'never' }),
  {
    languageOptions: { ecmaVersion: 2024, sourceType: 'module', globals: { ...globals.node } },
    rules: {
      'no-unused-vars': ['error', { args: 'none', caughtErrors: 'none' }],
      '@stylistic/space-before-function-paren': ['error', 'always'],
      '@stylistic/multiline-ternary': 'off',
      '@stylistic/operator-linebreak': 'off',
      '@stylistic/arrow-parens': ['error', 'always'],
      '@stylistic/quote-props': ['error', 'as-needed'],
      '@stylistic/max-statements-per-line': 'off',
      '@stylistic/quotes': ['error', 'single', { avoidEscape: true, allowTemplateLiterals: 'always' }],
      '@stylistic/indent-binary-ops': 'off',
      'no-empty': ['error', { allowEmptyCatch: true }]
    }
  },
  { files: ['web/**/*.js'], languageOptions: { globals: { ...globals.browser } } },
  { files: ['agents/page/**/*.js', 'lib/measurement/rum/page.js'], languageOptions: { globals: { ...globals.browser } } }
]
