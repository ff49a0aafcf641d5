import neostandard from 'neostandard'

export default [
  ...neostandard({ ignores: ['node_modules/**', '.h3lens/**', 'docs/**', 'web/vendor/**'] })
]
