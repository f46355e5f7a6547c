// A client of the appruntime API generated from its OpenAPI document
// (openapi-typescript types, openapi-fetch calls), as an integrator would
// write one. scripts/openapi-check generates schema.gen.d.ts and type-checks
// this file: a document that generators misread fails here, and the lines
// marked as expected errors prove the types refuse what the API refuses.
import createClient from "openapi-fetch";
import type { paths, components } from "./schema.gen";

type Session = components["schemas"]["Session"];

export function client(baseUrl: string, token: string) {
  return createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });
}

// A host mints a session for an app-tool step; the bundle then reads rows.
export async function mintAndRead(api: string, hostToken: string, stepId: string): Promise<unknown[][]> {
  const host = client(api, hostToken);
  const minted = await host.POST("/api/app-tools/sessions", { body: { step_id: stepId } });
  if (minted.error || !minted.data) throw new Error("mint refused");
  const session: Session = minted.data;
  const bundle = client(api, session.session_token);
  const read = await bundle.POST("/api/app-runtime/read", { body: { op: "list_invoices", payload: { limit: 10 } } });
  if (read.error || !read.data) throw new Error("read refused");
  const reply = read.data;
  if ("rows" in reply) return reply.rows;
  return [];
}

// An agent reads its task; an admin lists bindings.
export async function taskAndBindings(api: string, agentToken: string, adminToken: string, taskId: string) {
  const task = await client(api, agentToken).GET("/api/agent/tasks/{id}", { params: { path: { id: taskId } } });
  const bindings = await client(api, adminToken).GET("/api/admin/bindings");
  return { status: task.data?.status, bindings: bindings.data?.bindings.length ?? 0 };
}

// The types bite: a path the API does not serve, a missing path parameter
// and a body without the verb's op are refused by the compiler.
export async function refused(api: string, token: string) {
  const c = client(api, token);
  // @ts-expect-error: no such route
  await c.GET("/api/admin/bindingz");
  // @ts-expect-error: the task's id is required
  await c.GET("/api/agent/tasks/{id}", { params: { path: {} } });
  // @ts-expect-error: a verb's body names its op
  await c.POST("/api/app-runtime/read", { body: { payload: {} } });
}
