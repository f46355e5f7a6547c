// Package webhook signs outgoing webhook deliveries the Standard Webhooks way
// (standardwebhooks.com), so that receivers verify them with an off-the-shelf
// library in any language instead of hand-written code:
//
//	webhook-id:        the event's id, the same on every attempt (receivers dedupe on it)
//	webhook-timestamp: the attempt's time, unix seconds
//	webhook-signature: "v1," + base64(HMAC-SHA256(key, id + "." + timestamp + "." + body))
//
// The key is a Secret, written "whsec_" + base64(key). A Keyring holds the
// current secret and, for an overlap window after a rotation, the previous
// one: while both are live every delivery carries two signatures separated
// by a space, so a receiver verifies with either secret and switches over at
// its own pace.
//
// The package is a leaf: it knows nothing of agents, storage or delivery.
package webhook
