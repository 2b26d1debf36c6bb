package vpa

import "github.com/snug-dev/snug/lab/internal/lab"

func vpaModule(version string) lab.Module {
	const m = "k8s.io/autoscaler/vertical-pod-autoscaler"
	return lab.Module{
		CacheName: "vpa", Path: m, Version: version,
		Packages: []string{m + "/pkg/recommender", m + "/pkg/updater", m + "/pkg/admission-controller"},
		Files:    []string{crdManifest},
	}
}

func metricsServerModule(version string) lab.Module {
	const m = "sigs.k8s.io/metrics-server"
	return lab.Module{
		CacheName: "metrics-server", Path: m, Version: version,
		Packages:    []string{m + "/cmd/metrics-server"},
		VersionVars: []string{"k8s.io/client-go/pkg/version.gitVersion"},
	}
}

// crdManifest is VPA's CRD manifest inside its module.
const crdManifest = "deploy/vpa-v1-crd-gen.yaml"
