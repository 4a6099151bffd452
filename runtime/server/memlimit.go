package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// memoryLimitPercent is the share of its container's memory limit a server gives the Go
// runtime as its soft limit (GOMEMLIMIT): the garbage collector works harder as the heap
// nears it, instead of the kernel killing the process at the container's limit; the rest
// is room for what the soft limit does not bound tightly (goroutine stacks, memory not yet
// returned to the kernel).
const memoryLimitPercent = 90

// cgroupRoot is where a container sees its own cgroup.
const cgroupRoot = "/sys/fs/cgroup"

// containerMemoryLimit reads the memory limit of the cgroup mounted at root: cgroup v2's
// memory.max, else cgroup v1's memory/memory.limit_in_bytes. It returns 0 when there is
// none ("max", or v1's page-counter maximum) or no such file.
func containerMemoryLimit(root string) (int64, error) {
	for _, file := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		data, err := os.ReadFile(filepath.Join(root, file))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return 0, err
		}
		s := strings.TrimSpace(string(data))
		if s == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not a number of bytes", filepath.Join(root, file), s)
		}
		if n >= 1<<62 { // cgroup v1 writes its page counter's maximum for "no limit"
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}

// softMemoryLimit is the Go runtime's soft memory limit for a server in a container with
// the cgroup at root: memoryLimitPercent of the container's limit, or 0 (leave the
// runtime's) when GOMEMLIMIT is set (the user's choice) or the container has no limit.
// why says where the figure comes from.
func softMemoryLimit(getenv func(string) string, root string) (limit int64, why string, err error) {
	if v := getenv("GOMEMLIMIT"); v != "" {
		return 0, "GOMEMLIMIT=" + v + " is set", nil
	}
	container, err := containerMemoryLimit(root)
	if err != nil || container == 0 {
		return 0, "the container has no memory limit", err
	}
	return container / 100 * memoryLimitPercent, fmt.Sprintf("%d%% of the container's memory limit of %d MiB", memoryLimitPercent, container>>20), nil
}
