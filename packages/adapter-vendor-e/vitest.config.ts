import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "@genway/adapter-vendor-e",
    include: ["test/**/*.test.ts"]
  }
})
