package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnugPolicy tells snug which pods to keep sized to what they use, and how:
// which containers and resources it may change, within which bounds, how
// eagerly it grows and how cautiously it shrinks them. snug resizes pods in
// place through their resize subresource; it never changes a pod's QoS class.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=sp;snugpol,categories=snug
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.targetRef.kind`,description="Kind of the target workload"
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`,description="Name of the target workload"
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.updatePolicy.updateMode`,description="How snug applies its recommendations"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the policy is in force"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1,description="Why the policy is or is not in force"
// +kubebuilder:printcolumn:name="Selector",type=string,JSONPath=`.status.selector`,priority=1,description="Label selector of the pods the policy covers"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SnugPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which pods snug sizes and how.
	// +required
	Spec SnugPolicySpec `json:"spec"`

	// status is what snug's controller last observed and recommended.
	// +optional
	Status SnugPolicyStatus `json:"status,omitempty"`
}

// SnugPolicySpec says which pods snug sizes and how.
//
// +kubebuilder:validation:XValidation:rule="has(self.targetRef) != has(self.selector)",message="set exactly one of targetRef (a workload) and selector (a label selector)"
// +kubebuilder:validation:XValidation:rule="!has(self.selector) || (has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)",message="selector must not be empty: an empty selector would select every pod in the namespace",fieldPath=".selector"
// +kubebuilder:validation:XValidation:rule="!has(self.behavior) || !has(self.behavior.deferred) || !has(self.behavior.deferred.action) || self.behavior.deferred.action != 'Evict' || (has(self.updatePolicy) && has(self.updatePolicy.updateMode) && self.updatePolicy.updateMode == 'InPlaceOrRecreate')",message="deferred action Evict needs updatePolicy.updateMode InPlaceOrRecreate: the other modes never evict a pod",fieldPath=".behavior.deferred.action"
type SnugPolicySpec struct {
	// targetRef names the workload whose pods snug sizes: a Deployment,
	// StatefulSet, DaemonSet, ReplicaSet, Job or CronJob in the policy's
	// namespace. Exactly one of targetRef and selector is set.
	// +optional
	TargetRef *CrossVersionObjectReference `json:"targetRef,omitempty"`

	// selector selects the pods snug sizes by their labels, in the policy's
	// namespace, for pods that no supported workload owns. It must not be
	// empty. Exactly one of targetRef and selector is set.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// updatePolicy says whether and how snug applies its recommendations.
	// Defaults to an updatePolicy with every field at its default.
	// +optional
	// +kubebuilder:default={}
	UpdatePolicy *PodUpdatePolicy `json:"updatePolicy,omitempty"`

	// resourcePolicy says which containers and resources snug may change,
	// and within which bounds. Defaults to one containerPolicy for every
	// container ("*") with every field at its default.
	// +optional
	// +kubebuilder:default={}
	ResourcePolicy *PodResourcePolicy `json:"resourcePolicy,omitempty"`

	// behavior tunes when snug grows and shrinks containers, how far, how
	// often, and what it does about a resize the node cannot take yet.
	// Defaults to a behavior with every field at its default.
	// +optional
	// +kubebuilder:default={}
	Behavior *Behavior `json:"behavior,omitempty"`
}

// CrossVersionObjectReference names a workload, like the autoscaling API's
// type of the same name.
//
// +structType=atomic
// +kubebuilder:validation:XValidation:rule="self.kind in ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob']",message="kind must be one of Deployment, StatefulSet, DaemonSet, ReplicaSet, Job and CronJob; select other pods with spec.selector",fieldPath=".kind"
// +kubebuilder:validation:XValidation:rule="!has(self.apiVersion) || self.apiVersion == (self.kind in ['Job', 'CronJob'] ? 'batch/v1' : 'apps/v1')",message="apiVersion must be apps/v1 for a Deployment, StatefulSet, DaemonSet or ReplicaSet and batch/v1 for a Job or CronJob",fieldPath=".apiVersion"
type CrossVersionObjectReference struct {
	// apiVersion is the API version of the workload: apps/v1 for a
	// Deployment, StatefulSet, DaemonSet or ReplicaSet, batch/v1 for a Job or
	// CronJob. When absent, snug uses the one that fits kind.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion,omitempty"`

	// kind is the kind of the workload: Deployment, StatefulSet, DaemonSet,
	// ReplicaSet, Job or CronJob.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// name is the name of the workload, in the policy's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// UpdateMode says whether and how snug applies its recommendations to pods.
//
// +kubebuilder:validation:Enum=Off;InPlace;InPlaceOrRecreate;Initial
type UpdateMode string

const (
	// UpdateModeOff only recommends: snug writes the recommendation into the
	// policy's status and changes no pod.
	UpdateModeOff UpdateMode = "Off"
	// UpdateModeInPlace resizes running pods in place and never evicts one.
	UpdateModeInPlace UpdateMode = "InPlace"
	// UpdateModeInPlaceOrRecreate resizes in place, and evicts a pod only
	// where an in-place resize cannot work, within its PodDisruptionBudgets
	// and minReplicas.
	UpdateModeInPlaceOrRecreate UpdateMode = "InPlaceOrRecreate"
	// UpdateModeInitial sizes pods only when they are created: snug's
	// admission webhook sets a new pod's requests and limits from the
	// workload's learnt history, and no pod is resized in place afterwards.
	UpdateModeInitial UpdateMode = "Initial"
)

// PodUpdatePolicy says whether and how snug applies its recommendations.
type PodUpdatePolicy struct {
	// updateMode is how snug applies its recommendations: Off only
	// recommends; InPlace resizes running pods in place and never evicts;
	// InPlaceOrRecreate also evicts a pod where an in-place resize cannot
	// work, within its PodDisruptionBudgets and minReplicas; Initial sizes
	// pods at creation only (snug's admission webhook), never in place. The
	// webhook also sizes new pods under InPlace and InPlaceOrRecreate.
	// Defaults to InPlace.
	// +optional
	// +kubebuilder:default=InPlace
	UpdateMode UpdateMode `json:"updateMode,omitempty"`

	// minReplicas is the fewest pods of the target that must be running for
	// snug to evict one of them. Only InPlaceOrRecreate evicts; the other
	// modes ignore it. Defaults to 2, as the VerticalPodAutoscaler's updater.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// restartWindow lets snug apply a change to a container resource whose
	// resizePolicy is RestartContainer (a JVM's or a GOMEMLIMIT program's
	// memory) by the restart the kubelet makes for it, at a safe moment: one
	// pod of the policy at a time, while its other pods are Ready and its
	// PodDisruptionBudgets allow a disruption, never while the container
	// starts. When absent, such a change is held and no container is
	// restarted. Only InPlace and InPlaceOrRecreate resize.
	// +optional
	RestartWindow *RestartWindow `json:"restartWindow,omitempty"`
}

// The pod conditions of a restart window. The kubelet keeps pod
// conditions it does not own.
const (
	// PodConditionRestartWanted is True while snug's agent wants to restart
	// a container of the pod to apply a change to a RestartContainer
	// resource; its message names the containers and resources.
	PodConditionRestartWanted corev1.PodConditionType = "autoscaling.snug.dev/RestartWanted"
	// PodConditionRestartGranted is True while snug's controller lets the
	// agent restart the pod's container: one pod of a policy at a time.
	PodConditionRestartGranted corev1.PodConditionType = "autoscaling.snug.dev/RestartGranted"
	// PodReasonRestarted goes with PodConditionRestartWanted False once the
	// restarted container is Ready again.
	PodReasonRestarted = "Restarted"
)

// RestartWindow says when snug may restart a container to resize it.
type RestartWindow struct {
	// singleReplica lets snug restart a container of the policy's only
	// running pod, which leaves the workload unavailable while the
	// container restarts; without it such a pod gets no window.
	// +optional
	SingleReplica bool `json:"singleReplica,omitempty"`

	// minIntervalSeconds is the least time between two restarts of one
	// container, counted from its last start, and so also how long a
	// container runs before snug restarts it at all. Defaults to 3600.
	// +optional
	// +kubebuilder:default=3600
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=604800
	MinIntervalSeconds *int32 `json:"minIntervalSeconds,omitempty"`

	// minShrinkPercent is the least share of a memory limit a shrink must
	// take off to be worth a restart. Any grow is. Defaults to 20.
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=90
	MinShrinkPercent *int32 `json:"minShrinkPercent,omitempty"`
}

// PodResourcePolicy says which containers and resources snug may change.
type PodResourcePolicy struct {
	// containerPolicies are the per-container rules. A container follows the
	// entry with its name, else the entry named "*", else the defaults of a
	// containerPolicy. Names are unique. Defaults to a single entry for
	// "*" with every field at its default.
	// +optional
	// +listType=map
	// +listMapKey=containerName
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:default={{containerName: "*"}}
	// +kubebuilder:validation:XValidation:rule="self.all(p, self.exists_one(q, q.containerName == p.containerName))",message="containerName must be unique: give each container, and \"*\", at most one policy"
	ContainerPolicies []ContainerResourcePolicy `json:"containerPolicies,omitempty"`
}

// ContainerScalingMode says whether snug changes a container.
//
// +kubebuilder:validation:Enum=Auto;Off
type ContainerScalingMode string

const (
	// ContainerScalingModeAuto lets snug change the container.
	ContainerScalingModeAuto ContainerScalingMode = "Auto"
	// ContainerScalingModeOff leaves the container alone; snug still
	// recommends for it.
	ContainerScalingModeOff ContainerScalingMode = "Off"
)

// ContainerControlledValues says which of a container's values snug changes.
//
// +kubebuilder:validation:Enum=RequestsAndLimits;RequestsOnly
type ContainerControlledValues string

const (
	// ContainerControlledValuesRequestsAndLimits changes requests, and limits
	// in proportion to them, keeping the ratio the pod was created with.
	ContainerControlledValuesRequestsAndLimits ContainerControlledValues = "RequestsAndLimits"
	// ContainerControlledValuesRequestsOnly changes requests and leaves
	// limits as they are.
	ContainerControlledValuesRequestsOnly ContainerControlledValues = "RequestsOnly"
)

// ContainerResourcePolicy is the rule for one container, or for every
// container not named elsewhere ("*").
//
// +kubebuilder:validation:XValidation:rule="!has(self.minAllowed) || !has(self.maxAllowed) || !has(self.minAllowed.cpu) || !has(self.maxAllowed.cpu) || !isQuantity(string(self.minAllowed.cpu)) || !isQuantity(string(self.maxAllowed.cpu)) || quantity(string(self.minAllowed.cpu)).compareTo(quantity(string(self.maxAllowed.cpu))) <= 0",message="minAllowed.cpu must not be above maxAllowed.cpu",fieldPath=".minAllowed.cpu"
// +kubebuilder:validation:XValidation:rule="!has(self.minAllowed) || !has(self.maxAllowed) || !has(self.minAllowed.memory) || !has(self.maxAllowed.memory) || !isQuantity(string(self.minAllowed.memory)) || !isQuantity(string(self.maxAllowed.memory)) || quantity(string(self.minAllowed.memory)).compareTo(quantity(string(self.maxAllowed.memory))) <= 0",message="minAllowed.memory must not be above maxAllowed.memory",fieldPath=".minAllowed.memory"
type ContainerResourcePolicy struct {
	// containerName is the name of the container the rule is for, "*" for
	// every container that no other entry names, or "_pod" for the pod's
	// pod-level resources (spec.resources; without a "_pod" entry they
	// follow "*").
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == '*' || self == '_pod' || self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="containerName must be a container's name (lowercase letters, digits and '-'), \"*\" or \"_pod\" (the pod-level resources)"
	ContainerName string `json:"containerName"`

	// mode is Auto to let snug change the container, Off to leave it alone
	// (snug still recommends for it). Defaults to Auto.
	// +optional
	// +kubebuilder:default=Auto
	Mode ContainerScalingMode `json:"mode,omitempty"`

	// controlledResources are the resources snug may change: cpu, memory or
	// both. Defaults to [cpu, memory].
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum=cpu;memory
	// +kubebuilder:default={cpu,memory}
	ControlledResources []corev1.ResourceName `json:"controlledResources,omitempty"`

	// controlledValues is RequestsAndLimits to change requests and limits,
	// keeping their ratio, or RequestsOnly to change requests and leave
	// limits alone. Defaults to RequestsAndLimits.
	// +optional
	// +kubebuilder:default=RequestsAndLimits
	ControlledValues ContainerControlledValues `json:"controlledValues,omitempty"`

	// minAllowed is the least snug sets the container's requests to: cpu,
	// memory or both. When absent, there is no lower bound other than what
	// the pod's QoS class requires.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.cpu) || !isQuantity(string(self.cpu)) || !quantity(string(self.cpu)).isLessThan(quantity('0'))",message="minAllowed.cpu must not be negative",fieldPath=".cpu"
	// +kubebuilder:validation:XValidation:rule="!has(self.memory) || !isQuantity(string(self.memory)) || !quantity(string(self.memory)).isLessThan(quantity('0'))",message="minAllowed.memory must not be negative",fieldPath=".memory"
	MinAllowed *ResourceAmounts `json:"minAllowed,omitempty"`

	// maxAllowed is the most snug sets the container's requests to: cpu,
	// memory or both. When absent, the node's allocatable bounds it.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.cpu) || !isQuantity(string(self.cpu)) || quantity(string(self.cpu)).isGreaterThan(quantity('0'))",message="maxAllowed.cpu must be above zero",fieldPath=".cpu"
	// +kubebuilder:validation:XValidation:rule="!has(self.memory) || !isQuantity(string(self.memory)) || quantity(string(self.memory)).isGreaterThan(quantity('0'))",message="maxAllowed.memory must be above zero",fieldPath=".memory"
	MaxAllowed *ResourceAmounts `json:"maxAllowed,omitempty"`

	// startupBoost gives the container more CPU while it starts, in place.
	// When snug's agent sees the container start (in a new pod, or
	// restarted), it raises the container's CPU request by the boost (and
	// its limit with it under RequestsAndLimits, keeping their ratio; a
	// Guaranteed pod stays Guaranteed), as far as the node has room. It sets
	// them back to what they were once the container is Ready and
	// durationSeconds have passed; a container with neither a readiness nor
	// a startup probe is Ready as it starts, so its boost ends instead once
	// its CPU use is back within what it had before the boost (or after
	// durationSeconds, when set). A restarted container is boosted again.
	// The boost acts under updateMode InPlace and InPlaceOrRecreate, also
	// for a container whose mode is Off or whose cpu snug does not control,
	// and may go beyond maxAllowed, as VPA's startupBoost. Memory is never
	// boosted. When absent, the container is not boosted.
	// +optional
	StartupBoost *StartupBoost `json:"startupBoost,omitempty"`
}

// StartupBoost is the extra a container gets while it starts.
type StartupBoost struct {
	// cpu is the CPU boost.
	// +required
	CPU CPUStartupBoost `json:"cpu"`
}

// CPUBoostType says how a CPU boost is given.
//
// +kubebuilder:validation:Enum=Factor;Quantity
type CPUBoostType string

const (
	// CPUBoostFactor multiplies the container's CPU request by factor.
	CPUBoostFactor CPUBoostType = "Factor"
	// CPUBoostQuantity adds quantity to the container's CPU request.
	CPUBoostQuantity CPUBoostType = "Quantity"
)

// CPUStartupBoost is a container's CPU boost while it starts, in the form
// of VPA's startupBoost.cpu.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'Factor' || (has(self.factor) && !has(self.quantity))",message="type Factor needs factor and no quantity"
// +kubebuilder:validation:XValidation:rule="self.type != 'Quantity' || (has(self.quantity) && !has(self.factor))",message="type Quantity needs quantity and no factor"
type CPUStartupBoost struct {
	// type is Factor to multiply the CPU request by factor, or Quantity to
	// add quantity to it.
	// +required
	Type CPUBoostType `json:"type"`

	// factor is what the CPU request is multiplied by while the container
	// starts, with type Factor: 2 doubles it; 1 gives no boost (a container
	// that the "*" entry's boost should not reach).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Factor *int32 `json:"factor,omitempty"`

	// quantity is the CPU added to the request while the container starts,
	// with type Quantity, such as 500m or 2.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || quantity(string(self)).isGreaterThan(quantity('0'))",message="quantity must be above zero"
	Quantity *resource.Quantity `json:"quantity,omitempty"`

	// durationSeconds is how long the boost lasts after the container is
	// Ready; for a container with neither a readiness nor a startup probe,
	// the longest it lasts. With 0 the boost ends as the container is Ready
	// (or, without probes, when its CPU use is back within what it had
	// before the boost, within 10 minutes). Defaults to 0.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	DurationSeconds *int32 `json:"durationSeconds,omitempty"`
}

// ResourceAmounts is an amount of cpu, of memory, or of both. It has the
// JSON form of a VerticalPodAutoscaler's minAllowed and maxAllowed (a
// ResourceList) restricted to the two resources snug sizes; being a struct,
// it gives each quantity a bounded length, which keeps the CEL rules that
// compare quantities within the API server's cost budget. (The
// XIntOrString markers repeat what the Quantity schema says; without them
// controller-gen refuses MaxLength on a quantity.)
type ResourceAmounts struct {
	// cpu is an amount of CPU, such as 250m or 2.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=32
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// memory is an amount of memory, such as 512Mi or 2Gi.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=32
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// Behavior tunes snug's reactions.
//
// +kubebuilder:validation:XValidation:rule="!has(self.scaleUp) || !has(self.scaleUp.memoryWorkingSetPercent) || !has(self.memoryHeadroomPercent) || self.scaleUp.memoryWorkingSetPercent * (100 + self.memoryHeadroomPercent) > 10000",message="scaleUp.memoryWorkingSetPercent must be above 100*100/(100+memoryHeadroomPercent), the share of its limit a working set has right after a resize; otherwise snug would grow memory again at once. Raise one of the two",fieldPath=".scaleUp.memoryWorkingSetPercent"
type Behavior struct {
	// scaleUp says when snug grows a container at once.
	// Defaults to a scaleUp with every field at its default.
	// +optional
	// +kubebuilder:default={}
	ScaleUp *ScaleUpBehavior `json:"scaleUp,omitempty"`

	// scaleDown says when and how far snug shrinks a container.
	// Defaults to a scaleDown with every field at its default.
	// +optional
	// +kubebuilder:default={}
	ScaleDown *ScaleDownBehavior `json:"scaleDown,omitempty"`

	// memoryHeadroomPercent is the margin snug keeps above a container's
	// peak working set, in percent of it: memory is never set below peak
	// working set times (100 + memoryHeadroomPercent) / 100. Defaults to 20.
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=400
	MemoryHeadroomPercent *int32 `json:"memoryHeadroomPercent,omitempty"`

	// maxResizesPerHour bounds how often snug resizes any one pod, over a
	// sliding hour; once reached, the pod's next resize waits until the
	// oldest one is an hour old. Defaults to 20.
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	MaxResizesPerHour int32 `json:"maxResizesPerHour,omitempty"`

	// deferred says what snug does about a resize that the kubelet has
	// deferred because the node has no room for it yet.
	// Defaults to a deferred with every field at its default.
	// +optional
	// +kubebuilder:default={}
	Deferred *DeferredBehavior `json:"deferred,omitempty"`
}

// OOMKillAction says what snug does when a container is OOM-killed.
//
// +kubebuilder:validation:Enum=Grow;Ignore
type OOMKillAction string

const (
	// OOMKillActionGrow grows the container's memory at once.
	OOMKillActionGrow OOMKillAction = "Grow"
	// OOMKillActionIgnore leaves memory to the usual triggers.
	OOMKillActionIgnore OOMKillAction = "Ignore"
)

// ScaleUpBehavior says when snug grows a container at once, without waiting
// for its percentiles to move.
type ScaleUpBehavior struct {
	// cpuThrottledPercent is the share of CPU periods, in percent, in which a
	// container was throttled over one sample at or above which snug grows
	// its CPU at once. Defaults to 25, the threshold of the common
	// CPUThrottlingHigh alert.
	// +optional
	// +kubebuilder:default=25
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	CPUThrottledPercent int32 `json:"cpuThrottledPercent,omitempty"`

	// memoryWorkingSetPercent is the working set, in percent of the
	// container's memory limit (of its request when it has no limit), at or
	// above which snug grows its memory at once. Defaults to 90.
	// +optional
	// +kubebuilder:default=90
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MemoryWorkingSetPercent int32 `json:"memoryWorkingSetPercent,omitempty"`

	// onOOMKill is what snug does when a container is OOM-killed: Grow its
	// memory at once, or Ignore the kill and leave memory to the other
	// triggers. Defaults to Grow.
	// +optional
	// +kubebuilder:default=Grow
	OnOOMKill OOMKillAction `json:"onOOMKill,omitempty"`
}

// ScaleDownBehavior says when and how far snug shrinks a container.
type ScaleDownBehavior struct {
	// stabilizationWindowSeconds is how long a container's recommendation
	// must stay below its current size before snug shrinks it; 0 shrinks at
	// once. Defaults to 300, as the HorizontalPodAutoscaler's scale-down.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	StabilizationWindowSeconds *int32 `json:"stabilizationWindowSeconds,omitempty"`

	// maxStepPercent is the most one shrink takes off a container's current
	// value, in percent of it; 100 lets one resize go straight to the
	// recommendation. Defaults to 50.
	// +optional
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaxStepPercent int32 `json:"maxStepPercent,omitempty"`
}

// DeferredAction says what snug does about a resize that stays deferred.
//
// +kubebuilder:validation:Enum=Wait;FitToNode;Evict
type DeferredAction string

const (
	// DeferredActionWait leaves the resize pending until the kubelet can
	// apply it.
	DeferredActionWait DeferredAction = "Wait"
	// DeferredActionFitToNode lowers the pending resize to what the node has
	// room for now.
	DeferredActionFitToNode DeferredAction = "FitToNode"
	// DeferredActionEvict evicts the pod so that it is recreated where its
	// new size fits, within its PodDisruptionBudgets and minReplicas. Only
	// with updateMode InPlaceOrRecreate.
	DeferredActionEvict DeferredAction = "Evict"
)

// DeferredBehavior says what snug does about a deferred resize.
type DeferredBehavior struct {
	// action is what snug does once a resize has been deferred for
	// afterSeconds: Wait leaves it pending until the node has room (a
	// pending resize counts against the node when the scheduler places new
	// pods); FitToNode lowers it to what the node has room for now; Evict
	// evicts the pod so that it is recreated where it fits, within its
	// PodDisruptionBudgets and updatePolicy.minReplicas, and falls back to
	// FitToNode where eviction is not allowed (only with updateMode
	// InPlaceOrRecreate). Defaults to FitToNode.
	// +optional
	// +kubebuilder:default=FitToNode
	Action DeferredAction `json:"action,omitempty"`

	// afterSeconds is how long a resize stays deferred before snug takes
	// the action; Wait ignores it. Defaults to 30.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	AfterSeconds *int32 `json:"afterSeconds,omitempty"`
}

// SnugPolicyStatus is what snug's controller last observed and recommended.
type SnugPolicyStatus struct {
	// observedGeneration is the metadata.generation of the spec that this
	// status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// selector is the label selector, in its string form, of the pods the
	// policy covers: the target's selector, or spec.selector.
	// +optional
	Selector string `json:"selector,omitempty"`

	// recommendation is snug's current per-container recommendation for the
	// target as a whole; a single pod may be sized above it while it runs
	// hotter than its siblings.
	// +optional
	Recommendation *RecommendedPodResources `json:"recommendation,omitempty"`

	// uncontrolledResources are the resources snug leaves alone in every
	// container of the policy's pods, whatever containerPolicies say,
	// because a HorizontalPodAutoscaler scales the same workload on their
	// utilization (condition HPAConflict says which). A container's
	// effective controlledResources are its containerPolicy's minus these;
	// the agent reads them from here. Empty when nothing is left alone.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum=cpu;memory
	UncontrolledResources []corev1.ResourceName `json:"uncontrolledResources,omitempty"`

	// conditions are the policy's conditions; see the Condition* constants.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// restarts are the last container restarts snug made in restart windows
	// (updatePolicy.restartWindow), oldest first, at most 10.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Restarts []RestartRecord `json:"restarts,omitempty"`
}

// RestartRecord is one container restart snug made in a restart window.
type RestartRecord struct {
	// podName is the pod whose container was restarted.
	// +required
	// +kubebuilder:validation:MaxLength=253
	PodName string `json:"podName"`
	// time is when the window closed: the restarted container was Ready.
	// +required
	Time metav1.Time `json:"time"`
	// message says what the restart resized.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// RecommendedPodResources is the recommendation for every container of a pod.
type RecommendedPodResources struct {
	// containerRecommendations has one entry per container.
	// +optional
	// +listType=map
	// +listMapKey=containerName
	ContainerRecommendations []RecommendedContainerResources `json:"containerRecommendations,omitempty"`
}

// RecommendedContainerResources is the recommendation for one container, as
// the VerticalPodAutoscaler's.
type RecommendedContainerResources struct {
	// containerName is the name of the container.
	// +required
	ContainerName string `json:"containerName"`

	// target is the recommended requests, within minAllowed and maxAllowed.
	// +optional
	Target corev1.ResourceList `json:"target,omitempty"`

	// lowerBound is the least the container is expected to do well with.
	// +optional
	LowerBound corev1.ResourceList `json:"lowerBound,omitempty"`

	// upperBound is the most the container is expected to use.
	// +optional
	UpperBound corev1.ResourceList `json:"upperBound,omitempty"`

	// uncappedTarget is the target before minAllowed and maxAllowed were
	// applied.
	// +optional
	UncappedTarget corev1.ResourceList `json:"uncappedTarget,omitempty"`
}

// Condition types of a SnugPolicy.
const (
	// ConditionReady is True while the policy is in force: its target is
	// resolved and its spec is fully supported.
	ConditionReady = "Ready"
	// ConditionRecommendationProvided is True once status.recommendation
	// holds a recommendation.
	ConditionRecommendationProvided = "RecommendationProvided"
	// ConditionNoPodsMatched is True while the policy selects no pod.
	ConditionNoPodsMatched = "NoPodsMatched"
	// ConditionConfigUnsupported is True while part of the spec is accepted
	// but not acted on. Every field is acted on today, so it is False.
	ConditionConfigUnsupported = "ConfigUnsupported"
	// ConditionOverlapping is True while another policy in the namespace
	// selects some of the same pods. The older policy (by creation time,
	// then name) governs those pods; reason OlderPolicyWins on the older
	// one, YieldsToOlderPolicy on the younger.
	ConditionOverlapping = "Overlapping"
	// ConditionHPAConflict is True while a HorizontalPodAutoscaler scales
	// the policy's target on cpu or memory utilization; those resources are
	// then listed in status.uncontrolledResources and left alone.
	ConditionHPAConflict = "HPAConflict"
	// ConditionVPAConflict is True while a VerticalPodAutoscaler whose
	// updateMode is not Off targets the policy's workload or selects some
	// of its pods. snug then yields (reason YieldsToVPA): it keeps
	// recommending but changes none of the policy's pods until the VPA is
	// set to Off or deleted.
	ConditionVPAConflict = "VPAConflict"
)

// Condition reasons of a SnugPolicy.
const (
	// ReasonResolved goes with Ready (True): the target resolved to a
	// selector.
	ReasonResolved = "Resolved"
	// ReasonTargetNotFound goes with Ready (False): the targetRef names no
	// workload.
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonTargetUnsupported goes with Ready (False): the target has no
	// usable pod selector (such as a CronJob whose pod template has no
	// labels).
	ReasonTargetUnsupported = "TargetUnsupported"
	// ReasonOlderPolicyWins goes with Overlapping (True) on the older of two
	// overlapping policies: it keeps governing the shared pods.
	ReasonOlderPolicyWins = "OlderPolicyWins"
	// ReasonYieldsToOlderPolicy goes with Overlapping (True) on the younger
	// of two overlapping policies: it leaves the shared pods alone.
	ReasonYieldsToOlderPolicy = "YieldsToOlderPolicy"
	// ReasonHPAScalesResource goes with HPAConflict (True).
	ReasonHPAScalesResource = "HPAScalesResource"
	// ReasonYieldsToVPA goes with VPAConflict (True).
	ReasonYieldsToVPA = "YieldsToVPA"
)

// SnugPolicyList is a list of SnugPolicy.
//
// +kubebuilder:object:root=true
type SnugPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the policies.
	Items []SnugPolicy `json:"items"`
}
