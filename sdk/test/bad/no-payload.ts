// expect: error TS2554: Expected 2-3 arguments, but got 1.
// An op whose payload has required keys (an update's key column) must not be called without one.
import { connect } from "@appruntime/sdk";
import type { Ops } from "../binding.js";

const app = await connect<Ops>();
await app.write("set_status");
