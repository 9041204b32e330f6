import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "@genway/registry",
    include: ["test/**/*.test.ts"]
  }
})
