// Package tool holds what every executor of a base tool shares: the Call an
// executor receives, the Result it returns, the Failure by which a tool
// reports an error of its own, and the Set that routes a call to the
// executor of its base tool. The executors live in the packages below it,
// one per tool, named after what they depend on: python (a bwrap
// subprocess), csvlookup, sqlquery/postgres, sqlquery/mssql, translate (a
// LibreTranslate-compatible provider) and extract (an OpenAI-compatible
// model).
//
// How a caller renders what Run returns:
//
//   - a Result: 200 with Output, and Units billed at the tool's rate;
//   - a *Failure: 200 with the message as the reply's error (a script that
//     raised, a CSV not yet available, translation disabled on the agent),
//     and its Units billed;
//   - an apperr error: its status (invalid 400, forbidden 403,
//     not_implemented 501 when the deployment lacks the backing service,
//     bad_gateway 502, unavailable 503, timeout 504 when the context ended);
//   - any other error: 500, logged.
package tool
