package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/appruntime/appruntime/internal/intent"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// openIntent records, before a write may commit on the data source, what is
// about to be written (internal/intent): a crash from here until its feed
// row is recorded leaves the intent for the sweep, which records the write
// as outcome unknown. A step whose await is settled is refused with 409.
func (s *Service) openIntent(ctx context.Context, c session.Claims, name string, record models.JSON) (models.WriteIntent, error) {
	in := models.WriteIntent{ID: models.NewID(), TaskID: c.TaskID, StepID: c.StepID, Name: name, Actor: actor(c),
		Payload: record, CreatedAt: time.Now().UTC()}
	in, opened, err := s.Journal.Open(ctx, in)
	if err != nil {
		return in, err
	}
	if !opened {
		return in, review.SettledError()
	}
	return in, nil
}

// intentRecord is an intent's record of what is to be written:
// {nameKey: name, member: …, "verb": verb} (keys in order, as encoding/json
// writes a map), member holding the request payload's member of that name
// as it was sent (body is the request), without encoding what was decoded
// from it again; value, the decoded member, is encoded only when the member
// cannot be kept as sent (strictjson.Lookup).
func intentRecord(verb, nameKey, name, member string, body []byte, value any) models.JSON {
	raw, ok := strictjson.Lookup(body, "payload", member)
	if !ok {
		return models.MustJSON(map[string]any{nameKey: name, member: value, "verb": verb})
	}
	quotedName, err := json.Marshal(name)
	if err != nil {
		return models.MustJSON(map[string]any{nameKey: name, member: value, "verb": verb})
	}
	out := make([]byte, 0, len(raw)+len(quotedName)+len(nameKey)+len(member)+len(verb)+40)
	out = append(out, '{', '"')
	out = append(out, nameKey...)
	out = append(out, '"', ':')
	out = append(out, quotedName...)
	out = append(out, ',', '"')
	out = append(out, member...)
	out = append(out, '"', ':')
	out = append(out, raw...)
	out = append(out, `,"verb":"`...)
	out = append(out, verb...)
	return append(out, '"', '}')
}

// completeIntent queues the turning of a committed write's intent into its
// feed row (the intent's payload with rows_affected) and does not wait for
// it: the write is done, and its intent already guarantees a record (docs/architecture.md#the-write-guarantee). The request may be gone by now; the record is
// made all the same.
func (s *Service) completeIntent(ctx context.Context, in models.WriteIntent, rowsAffected int64) error {
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	return s.Journal.CompleteLater(ctx, intent.Completion{Intent: in, Type: models.FeedAgentAction, RowsAffected: rowsAffected})
}

// settleFailed records what a failed write leaves and returns writeErr: when
// the data source refused the write or never got it, nothing (the intent is
// dropped); when its commit may have happened (lost: the answer was lost in
// flight, datasource.AnswerLost), an outcome-unknown feed row.
func (s *Service) settleFailed(ctx context.Context, in models.WriteIntent, writeErr error, lost bool) error {
	ctx = context.WithoutCancel(ctx)
	var err error
	if lost {
		_, err = s.Journal.Complete(ctx, intent.Completion{Intent: in,
			Type: models.FeedAgentActionUnknown, Payload: intent.UnknownPayload(in, intent.ReasonAnswerLost)})
	} else {
		err = s.Journal.Drop(ctx, in)
	}
	if err != nil {
		return errors.Join(writeErr, err)
	}
	return writeErr
}
