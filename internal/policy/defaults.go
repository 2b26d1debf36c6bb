package policy

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// The policy defaults. The CRD's schema applies the same values through its
// +kubebuilder:default markers (api/v1alpha1); TestDefaultsMatchCRD fails
// when the two disagree. The code applies them to fields a policy leaves
// unset, which the API server never does, but objects built in code do.
const (
	DefaultUpdateMode                       = v1alpha1.UpdateModeInPlace
	DefaultMinReplicas                int32 = 2
	DefaultContainerMode                    = v1alpha1.ContainerScalingModeAuto
	DefaultControlledValues                 = v1alpha1.ContainerControlledValuesRequestsAndLimits
	DefaultMemoryHeadroomPercent      int32 = 20
	DefaultMaxResizesPerHour          int32 = 20
	DefaultCPUThrottledPercent        int32 = 25
	DefaultMemoryWorkingSetPercent    int32 = 90
	DefaultOnOOMKill                        = v1alpha1.OOMKillActionGrow
	DefaultStabilizationWindowSeconds int32 = 300
	DefaultMaxStepPercent             int32 = 50
	DefaultDeferredAction                   = v1alpha1.DeferredActionFitToNode
	DefaultDeferredAfterSeconds       int32 = 30
	// DefaultContainerName is the containerPolicies entry of a policy that
	// has none: it covers every container.
	DefaultContainerName = "*"
)

// DefaultControlledResources are the resources a container policy controls
// when it names none.
func DefaultControlledResources() []corev1.ResourceName {
	return []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
}

// DefaultDeferredAfter is DefaultDeferredAfterSeconds as a duration.
const DefaultDeferredAfter = time.Duration(DefaultDeferredAfterSeconds) * time.Second
