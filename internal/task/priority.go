package task

import (
	"context"
	"encoding/json"
	"fmt"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/models"
)

// reprioritiseBatch bounds the task ids of one UPDATE.
const reprioritiseBatch = 1000

// Reprioritise sets, inside tx, the priority of agentID's unfinished tasks
// (running or parked) from their key detail field, as the summary pass
// would have (priorityValue), and 0 where they have none or field is "":
// what changing an agent's priority_field means for the review queue.
// Finished tasks keep theirs; no queue reads them.
func Reprioritise(ctx context.Context, tx *gorm.DB, agentID, field string) error {
	open := []string{models.TaskRunning, models.TaskWaitingForInput}
	tx = tx.WithContext(ctx)
	if err := tx.Model(&models.Task{}).Where("agent_id = ? AND status IN ? AND priority <> 0", agentID, open).
		Update("priority", 0).Error; err != nil {
		return fmt.Errorf("task: reset priorities of agent %s: %w", agentID, err)
	}
	if field == "" {
		return nil
	}
	var values []models.AgentKeyValue
	err := tx.Where("agent_id = ? AND key = ? AND task_id IN (SELECT id FROM tasks WHERE agent_id = ? AND status IN ?)",
		agentID, field, agentID, open).Find(&values).Error
	if err != nil {
		return fmt.Errorf("task: read %s of agent %s's tasks: %w", field, agentID, err)
	}
	byPriority := map[float64][]string{}
	for _, kv := range values {
		if p, ok := priorityValue(json.RawMessage(kv.Value)); ok && p != 0 {
			byPriority[p] = append(byPriority[p], kv.TaskID)
		}
	}
	for p, ids := range byPriority {
		for start := 0; start < len(ids); start += reprioritiseBatch {
			chunk := ids[start:min(start+reprioritiseBatch, len(ids))]
			if err := tx.Model(&models.Task{}).Where("id IN ?", chunk).Update("priority", p).Error; err != nil {
				return fmt.Errorf("task: set priorities of agent %s: %w", agentID, err)
			}
		}
	}
	return nil
}
