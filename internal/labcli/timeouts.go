package labcli

import "time"

// requestTimeout bounds each request to the API server. Watches end with
// it too; the code that watches starts them again.
const requestTimeout = 30 * time.Second

// labCgroupRoot is where the lab's node, this machine, mounts its cgroups.
const labCgroupRoot = "/sys/fs/cgroup"
