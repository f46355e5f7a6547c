package python

// OnStart makes e tell f the process group of each run it starts.
func (e *Executor) OnStart(f func(pgid int)) { e.started = f }
