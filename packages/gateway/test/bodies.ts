/**
 * A valid minimal body for every task endpoint of SPEC.md, by endpoint id.
 */
import { SampleMedia } from "@genway/core"

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

/** A 400x400 PNG as a data URL (E5/E6 accept 360–2000 px). */
export const pngDataUrl = `data:image/png;base64,${b64(SampleMedia.png(400, 400))}`

/** Valid bodies by endpoint id. */
export const validBodies: Record<string, Record<string, unknown>> = {
  E3: {
    model: "vid2.1-vace-plus",
    function: "image_reference",
    prompt: "a dancer in the rain",
    ref_images_url: ["https://images.example.com/dancer.png"]
  },
  E4: { prompt: "a cat surfing a wave at sunset", duration: 5 },
  E5: { prompt: "the statue turns its head", image: pngDataUrl, resolution: "720P" },
  E6: { prompt: "the flag waves", image: pngDataUrl },
  E7: { prompt: "a paper boat drifting down a stream", seconds: "4" },
  E8: { image: b64(SampleMedia.png(400, 400)), prompt: "the lighthouse blinks", duration: 5 },
  G1: { prompt: "a timelapse of clouds" },
  G2: { prompt: "a timelapse of a city at night" },
  G3: { prompt: "a drone shot over mountains" },
  G4: { prompt: "a watercolour fox" },
  G5: { first_frame_url: "https://images.example.com/a.png", last_frame_url: "https://images.example.com/b.png" },
  G6: { prompt: "an isometric castle", n: 2 },
  G7: { prompt: "waves on a beach" },
  G8: { prompt: "a train crossing a bridge" }
}
