package convert

import (
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// VPAResource is the resource of VerticalPodAutoscaler v1.
var VPAResource = schema.GroupVersionResource{Group: "autoscaling.k8s.io", Version: "v1", Resource: "verticalpodautoscalers"}

// VerticalPodAutoscaler mirrors the spec of VPA's v1 type
// (k8s.io/autoscaler/vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1,
// VPA 1.8.1), field for field; its status is not read.
type VerticalPodAutoscaler struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              VPASpec `json:"spec"`
}

// VPASpec mirrors VerticalPodAutoscalerSpec.
type VPASpec struct {
	TargetRef      *autoscalingv1.CrossVersionObjectReference `json:"targetRef"`
	UpdatePolicy   *VPAUpdatePolicy                           `json:"updatePolicy,omitempty"`
	ResourcePolicy *VPAResourcePolicy                         `json:"resourcePolicy,omitempty"`
	Recommenders   []*VPARecommenderSelector                  `json:"recommenders,omitempty"`
	StartupBoost   *VPAStartupBoost                           `json:"startupBoost,omitempty"`
}

// VPA update modes (UpdateMode).
const (
	VPAModeOff               = "Off"
	VPAModeInitial           = "Initial"
	VPAModeRecreate          = "Recreate"
	VPAModeAuto              = "Auto"
	VPAModeInPlaceOrRecreate = "InPlaceOrRecreate"
	VPAModeInPlace           = "InPlace"
)

// VPAUpdatePolicy mirrors PodUpdatePolicy.
type VPAUpdatePolicy struct {
	UpdateMode           *string                   `json:"updateMode,omitempty"`
	MinReplicas          *int32                    `json:"minReplicas,omitempty"`
	EvictionRequirements []*VPAEvictionRequirement `json:"evictionRequirements,omitempty"`
	EvictAfterOOMSeconds *int32                    `json:"evictAfterOOMSeconds,omitempty"`
}

// VPAEvictionRequirement mirrors EvictionRequirement.
type VPAEvictionRequirement struct {
	Resources         []corev1.ResourceName `json:"resources"`
	ChangeRequirement string                `json:"changeRequirement"`
}

// VPAResourcePolicy mirrors PodResourcePolicy.
type VPAResourcePolicy struct {
	ContainerPolicies []VPAContainerPolicy `json:"containerPolicies,omitempty"`
}

// VPAContainerPolicy mirrors ContainerResourcePolicy.
type VPAContainerPolicy struct {
	ContainerName                    string                 `json:"containerName,omitempty"`
	Mode                             *string                `json:"mode,omitempty"`
	MinAllowed                       corev1.ResourceList    `json:"minAllowed,omitempty"`
	MaxAllowed                       corev1.ResourceList    `json:"maxAllowed,omitempty"`
	ControlledResources              *[]corev1.ResourceName `json:"controlledResources,omitempty"`
	ControlledValues                 *string                `json:"controlledValues,omitempty"`
	OOMBumpUpRatio                   *resource.Quantity     `json:"oomBumpUpRatio,omitempty"`
	OOMMinBumpUp                     *resource.Quantity     `json:"oomMinBumpUp,omitempty"`
	MemoryAggregationIntervalSeconds *int32                 `json:"memoryAggregationIntervalSeconds,omitempty"`
	MemoryAggregationIntervalCount   *int64                 `json:"memoryAggregationIntervalCount,omitempty"`
	StartupBoost                     *VPAStartupBoost       `json:"startupBoost,omitempty"`
}

// VPARecommenderSelector mirrors VerticalPodAutoscalerRecommenderSelector.
type VPARecommenderSelector struct {
	Name string `json:"name"`
}

// VPAStartupBoost mirrors StartupBoost.
type VPAStartupBoost struct {
	CPU *VPAGenericStartupBoost `json:"cpu,omitempty"`
}

// VPAGenericStartupBoost mirrors GenericStartupBoost.
type VPAGenericStartupBoost struct {
	Type            string             `json:"type"`
	Factor          *int32             `json:"factor,omitempty"`
	Quantity        *resource.Quantity `json:"quantity,omitempty"`
	DurationSeconds *int32             `json:"durationSeconds,omitempty"`
}

// FromUnstructured decodes a VerticalPodAutoscaler object as the dynamic
// client returns it.
func FromUnstructured(obj map[string]any) (*VerticalPodAutoscaler, error) {
	var v VerticalPodAutoscaler
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &v); err != nil {
		return nil, fmt.Errorf("decoding VerticalPodAutoscaler: %w", err)
	}
	return &v, nil
}

// UpdateMode is the VPA's update mode; unset means Recreate, VPA's
// default.
func (v *VerticalPodAutoscaler) UpdateMode() string {
	if u := v.Spec.UpdatePolicy; u != nil && u.UpdateMode != nil && *u.UpdateMode != "" {
		return *u.UpdateMode
	}
	return VPAModeRecreate
}

// Acts reports whether the VPA may change pods: every mode but Off does
// (Initial at their creation, the others also while they run).
func (v *VerticalPodAutoscaler) Acts() bool { return v.UpdateMode() != VPAModeOff }
