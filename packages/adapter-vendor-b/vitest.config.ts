import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "@genway/adapter-vendor-b",
    include: ["test/**/*.test.ts"]
  }
})
