package labcli

import "time"

// requestTimeout bounds each request to the API server. Watches end with
// it too; the code that watches starts them again.
const requestTimeout = 30 * time.Second
