// expect: error TS2345: Argument of type '"list_invoicez"' is not assignable
// An op the binding does not declare must not compile.
import { connect } from "@appruntime/sdk";
import type { Ops } from "../binding.js";

const app = await connect<Ops>();
await app.read("list_invoicez", { filters: { vendor: "x" } });
