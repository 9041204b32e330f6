import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "@genway/core",
    include: ["test/**/*.test.ts"]
  }
})
