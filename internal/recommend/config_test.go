package recommend

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"zero half-life", func(c *Config) { c.CPUHalfLife = 0 }, "cpu half-life"},
		{"sub-millisecond half-life", func(c *Config) { c.MemoryHalfLife = time.Microsecond }, "whole number of milliseconds"},
		{"percentiles out of order", func(c *Config) { c.LowerPercentile = 0.95 }, "ordered"},
		{"percentile above 1", func(c *Config) { c.UpperPercentile = 1.5 }, "upper percentile"},
		{"negative margin", func(c *Config) { c.CPUMargin = -0.1 }, "cpu margin"},
		{"shrink band 1", func(c *Config) { c.ShrinkBand = 1.5 }, "shrink band"},
		{"zero max shrink", func(c *Config) { c.MaxCPUShrinkFraction = 0 }, "max cpu shrink fraction"},
		{"zero sustain", func(c *Config) { c.CPUSustain = 0 }, "cpu sustain"},
		{"growth factor 1", func(c *Config) { c.MemoryGrowthFactor = 1 }, "memory growth factor"},
		{"no resizes", func(c *Config) { c.MaxResizesPerHour = 0 }, "max resizes per hour"},
		{"reserve eats budget", func(c *Config) { c.GrowReserve = 12 }, "grow reserve"},
		{"backoff max below initial", func(c *Config) { c.BackoffMax = time.Second }, "max backoff"},
		{"zero min cpu", func(c *Config) { c.MinCPUMillis = 0 }, "minimum targets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error about %q", err, tc.want)
			}
		})
	}
	err := Config{}.Validate()
	if err == nil || strings.Count(err.Error(), "\n") < 10 {
		t.Errorf("zero config: want every problem listed, got %v", err)
	}
}
