// Lint and format: Effect's own choices. `npm run format` is `eslint --fix .`; `npm run lint` checks.
// The formatter is dprint's TypeScript plugin run as wasm by the `@effect/dprint` rule (the dprint CLI
// would fetch its plugins from a URL). Typed rules read the projects of tsconfig.json.
import * as effectEslint from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

const typed = ["src/**/*.{ts,tsx}", "test/**/*.ts", "scripts/**/*.ts", "vitest.config.ts"]

export default tseslint.config(
  // .bench/ holds the reference worktrees `npm run bench -- --against` builds: another commit's code.
  { ignores: ["**/dist/**", "**/.build/**", "**/node_modules/**", ".bench/**", "docs/console/**", "**/*.d.mts"] },
  { ignores: ["bench/**"] }, // the peer frameworks' package folders (`npm run bench -- --peer voltagent`)
  ...effectEslint.configs.dprint,
  {
    files: ["**/*.{ts,tsx,mjs,js}"],
    languageOptions: { parser: tseslint.parser },
    rules: {
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }]
    }
  },
  {
    files: typed,
    ignores: ["test/type-fixtures/**", "test/type-fixtures-ok/**"],
    plugins: { "@typescript-eslint": tseslint.plugin },
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname }
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      // A switch with a default handles the rest on purpose (unknown input, a newer library's kinds).
      "@typescript-eslint/switch-exhaustiveness-check": ["error", { considerDefaultExhaustiveForUnions: true }],
      // Off until noUncheckedIndexedAccess is on: it reads guards on index signatures, SQL rows, regex groups
      // and JSON.stringify as dead code (every report read was one; docs/decisions.md, issue #43).
      "@typescript-eslint/no-unnecessary-condition": "off",
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }]
    }
  }
)
