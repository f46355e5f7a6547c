// expect: error TS2561: Object literal may only specify known properties, but 'vendr' does not exist
// A filter on a column the read does not declare filterable must not compile.
import { connect } from "@appruntime/sdk";
import type { Ops } from "../binding.js";

const app = await connect<Ops>();
await app.read("list_invoices", { filters: { vendr: "x" } });
