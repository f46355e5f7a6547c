// Package models holds appruntime's gorm models: one struct per table of the
// platform database and their small methods. It is a leaf: no queries live
// here (they are in internal/store and the domain packages).
package models
