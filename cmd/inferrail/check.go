package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/inferrail/inferrail/balancer"
)

func init() {
	register(command{name: "check", summary: "validate a balancer config file and exit", run: runCheck})
}

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("check", "--config FILE", stderr)
	configFile := fs.String("config", "", "YAML config file to validate")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *configFile == "" {
		fmt.Fprintln(stderr, "--config is required")
		fs.Usage()
		return errUsage
	}
	cfg, err := balancer.LoadConfigFile(*configFile)
	if verr := cfg.Validate(); verr != nil {
		err = errors.Join(err, verr)
	} else if err == nil {
		err = cfg.Preflight()
	}
	if err != nil {
		return fmt.Errorf("%s is not valid:\n%w", *configFile, err)
	}
	fmt.Fprintf(stdout, "%s: ok (%d models, %d static replicas, gossip %s)\n", *configFile, len(cfg.Models), len(cfg.Replicas), onOff(cfg.Gossip.Enabled))
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
