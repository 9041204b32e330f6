import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "@genway/gateway",
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/globalSetup.ts"]
  }
})
