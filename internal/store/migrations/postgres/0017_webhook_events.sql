-- Issue 29 §2 (docs/agent-platforms.md#webhook-event-catalogue): an agent
-- chooses which event types its webhook receives (null: every type), and a
-- delivery attempt keeps the type of the event it carried, so that the
-- console's deliveries search filters on it after the event's outbox row is
-- pruned. Attempts made before this migration take the type from their
-- outbox row while it is still kept.
ALTER TABLE agents ADD COLUMN webhook_events jsonb;
ALTER TABLE webhook_deliveries ADD COLUMN event_type text NOT NULL DEFAULT '';
UPDATE webhook_deliveries SET event_type = o.payload ->> 'type'
    FROM outbox o WHERE o.id = webhook_deliveries.event_id AND o.payload ->> 'type' IS NOT NULL;
CREATE INDEX webhook_deliveries_event_type ON webhook_deliveries (event_type);
