// Package auth authenticates API callers by bearer token (host, agent and
// admin scopes) and console users by password, and issues new tokens.
package auth
