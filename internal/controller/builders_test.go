package controller

import tb "github.com/snug-dev/snug/internal/testbuild"

// t0 is the tests' reference time.
var t0 = tb.T0
