import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "@genway/adapter-vendor-a",
    include: ["test/**/*.test.ts"]
  }
})
