import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "@genway/adapter-vendor-c",
    include: ["test/**/*.test.ts"]
  }
})
