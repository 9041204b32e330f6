import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "@genway/adapter-kit",
    include: ["test/**/*.test.ts"]
  }
})
