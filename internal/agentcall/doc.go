// Package agentcall stores and runs agent tools (seed 003) for the API and
// the console; internal/agenttool holds the rules it applies.
//
//   - Declarations: an agent's tool declarations, saved after
//     agenttool.ParseDeclaration (strict JSON, provider-safe name, input
//     schema compiled strictly, target checked; Authorization refused in an
//     app target's headers), one name per agent, every change audited.
//   - Call: an agent calls one of its tools on a running task. The input is
//     checked against the schema, the target dispatched within a deadline;
//     the call is a step and a tool_call feed event. A pending_input reply
//     parks the task on an await whose source is the call.
//   - Click: a person presses a button of a parked call's card (once: of
//     racing clicks one runs); its target runs, or its input is the result,
//     and the await is released through the outbox exactly as a review
//     action releases one. A failing target leaves the task parked with the
//     error on the call and in the feed.
package agentcall
