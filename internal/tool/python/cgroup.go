package python

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroupVersion says which cgroup interface a directory speaks.
type cgroupVersion int

const (
	cgroupV1 cgroupVersion = 1
	cgroupV2 cgroupVersion = 2
)

// cgroupParent is the delegated cgroup under which each run gets a cgroup
// of its own with a memory limit. Memory the kernel charges to a run's
// processes counts against it, the pages of the sandbox's tmpfs mounts
// (/tmp, /dev/shm) included, since tmpfs pages are charged to the cgroup of
// the process that writes them.
type cgroupParent struct {
	dir     string
	version cgroupVersion
}

// runCgroups numbers the runs' cgroups within this process.
var runCgroups atomic.Int64

// findCgroup returns the cgroup parent at dir, or, when dir is empty, the
// worker's own memory cgroup: the v2 one when the unified hierarchy offers
// the memory controller, else the v1 memory hierarchy's. It creates and
// removes one limited child to prove that runs can be placed under it.
func findCgroup(dir string) (*cgroupParent, error) {
	if dir == "" {
		found, err := ownMemoryCgroup()
		if err != nil {
			return nil, err
		}
		dir = found
	}
	p := &cgroupParent{dir: dir}
	switch {
	case fileExists(filepath.Join(dir, "cgroup.controllers")):
		p.version = cgroupV2
		controllers, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		if err != nil || !slices.Contains(strings.Fields(string(controllers)), "memory") {
			return nil, fmt.Errorf("the cgroup %s (v2) has no memory controller", dir)
		}
		// Children get the memory controller only if the parent hands it
		// down; this fails while the parent itself holds processes.
		subtree, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		if !slices.Contains(strings.Fields(string(subtree)), "memory") {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory"), 0); err != nil {
				return nil, fmt.Errorf("cannot enable the memory controller for the children of %s (v2; a delegated cgroup that holds no processes itself is needed): %w", dir, err)
			}
		}
	case fileExists(filepath.Join(dir, "memory.limit_in_bytes")):
		p.version = cgroupV1
	default:
		return nil, fmt.Errorf("%s is not a memory cgroup (neither v2's cgroup.controllers nor v1's memory.limit_in_bytes is there)", dir)
	}
	probe, err := p.create(64 << 20)
	if err != nil {
		return nil, err
	}
	if err := probe.remove(); err != nil {
		return nil, err
	}
	return p, nil
}

// ownMemoryCgroup finds the directory of this process's memory cgroup from
// /proc/self/cgroup and the mount table.
func ownMemoryCgroup() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("no cgroups here: %w", err)
	}
	var v1Path, v2Path string
	haveV2 := false
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2Path, haveV2 = parts[2], true
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			v1Path = parts[2]
		}
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return "", err
	}
	if haveV2 {
		if m, ok := mounts["cgroup2"]; ok {
			dir := m.dir(v2Path)
			controllers, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
			if slices.Contains(strings.Fields(string(controllers)), "memory") {
				return dir, nil
			}
		}
	}
	if v1Path != "" {
		if m, ok := mounts["memory"]; ok {
			return m.dir(v1Path), nil
		}
	}
	return "", errors.New("this process is in no memory cgroup that is mounted here (neither cgroup v2 with the memory controller nor v1's memory hierarchy)")
}

// cgroupMount is where a hierarchy is mounted and which of its paths the
// mount shows at its top (not / inside a cgroup namespace or a bind mount).
type cgroupMount struct{ point, root string }

func (m cgroupMount) dir(path string) string {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = path
	}
	return filepath.Join(m.point, rel)
}

// cgroupMounts reads /proc/self/mountinfo: the cgroup2 mount under the key
// "cgroup2", the v1 memory hierarchy under "memory".
func cgroupMounts() (map[string]cgroupMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	defer f.Close()
	found := map[string]cgroupMount{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 5 || len(fields) < sep+4 {
			continue
		}
		m := cgroupMount{point: fields[4], root: fields[3]}
		switch fields[sep+1] {
		case "cgroup2":
			if _, ok := found["cgroup2"]; !ok {
				found["cgroup2"] = m
			}
		case "cgroup":
			if slices.Contains(strings.Split(fields[sep+3], ","), "memory") {
				found["memory"] = m
			}
		}
	}
	return found, sc.Err()
}

// runCgroup is one run's cgroup.
type runCgroup struct {
	dir     string
	version cgroupVersion
}

// create makes a run's cgroup whose memory, swap included, is limited to
// limit bytes.
func (p *cgroupParent) create(limit int64) (*runCgroup, error) {
	dir := filepath.Join(p.dir, fmt.Sprintf("appruntime-python-%d-%d", os.Getpid(), runCgroups.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create a cgroup under %s: %w", p.dir, err)
	}
	c := &runCgroup{dir: dir, version: p.version}
	value := []byte(strconv.FormatInt(limit, 10))
	var err error
	if p.version == cgroupV2 {
		err = c.write("memory.max", value)
		// Without swap the limit is the limit; a kernel without swap
		// accounting has no such file.
		if err == nil && fileExists(filepath.Join(dir, "memory.swap.max")) {
			err = c.write("memory.swap.max", []byte("0"))
		}
	} else {
		err = c.write("memory.limit_in_bytes", value)
		if err == nil && fileExists(filepath.Join(dir, "memory.memsw.limit_in_bytes")) {
			err = c.write("memory.memsw.limit_in_bytes", value)
		}
	}
	if err != nil {
		_ = c.remove()
		return nil, fmt.Errorf("cannot set a memory limit in %s: %w", dir, err)
	}
	return c, nil
}

func (c *runCgroup) write(file string, value []byte) error {
	return os.WriteFile(filepath.Join(c.dir, file), value, 0)
}

// join moves the processes pids into the cgroup. Memory they allocate from
// then on is charged to it, and their children are born in it.
func (c *runCgroup) join(pids ...int) error {
	for _, pid := range pids {
		if err := c.write("cgroup.procs", []byte(strconv.Itoa(pid))); err != nil {
			return fmt.Errorf("python: move process %d into %s: %w", pid, c.dir, err)
		}
	}
	return nil
}

// oomKilled reports whether the kernel killed a process of the cgroup for
// going over its memory limit.
func (c *runCgroup) oomKilled() bool {
	file := "memory.events"
	if c.version == cgroupV1 {
		file = "memory.oom_control"
	}
	data, err := os.ReadFile(filepath.Join(c.dir, file))
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if n, ok := strings.CutPrefix(line, "oom_kill "); ok {
			return strings.TrimSpace(n) != "0"
		}
	}
	return false
}

// remove deletes the cgroup once its processes are gone; an exited
// process may leave it a moment after Run saw it go.
func (c *runCgroup) remove() error {
	deadline := time.Now().Add(killWait)
	for {
		err := syscall.Rmdir(c.dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("python: remove the cgroup %s: %w", c.dir, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
