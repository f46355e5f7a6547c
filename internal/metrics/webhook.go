package metrics

// WebhookOutcome is how one webhook delivery attempt ended.
type WebhookOutcome string

// The outcomes of a delivery attempt.
const (
	WebhookDelivered   WebhookOutcome = "delivered"   // the receiver answered 2xx
	WebhookRejected    WebhookOutcome = "rejected"    // it answered anything else (a redirect included)
	WebhookUnreachable WebhookOutcome = "unreachable" // no reply: connection, TLS or timeout
	WebhookRefused     WebhookOutcome = "refused"     // not sent: the address is refused, or the agent has no usable secret or URL
)

// ObserveWebhookAttempt records one delivery attempt: a delivered one counts
// in appruntime_webhook_deliveries_total, the others in
// appruntime_webhook_delivery_failures_total by reason.
func (m *Metrics) ObserveWebhookAttempt(o WebhookOutcome) {
	if m == nil {
		return
	}
	switch o {
	case WebhookDelivered:
		m.webhookOK.Inc()
	case WebhookRejected, WebhookUnreachable, WebhookRefused:
		m.webhookFailed.WithLabelValues(string(o)).Inc()
	default:
		m.webhookFailed.WithLabelValues(Other).Inc()
	}
}
