package testbuild

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// PolicyBuilder builds a SnugPolicy. Its methods change the policy and
// return the builder.
type PolicyBuilder struct{ p *v1alpha1.SnugPolicy }

// Policy starts a policy named name in Namespace, created at T0, with UID
// "uid-"+name and generation 1, selecting nothing yet.
func Policy(name string) *PolicyBuilder {
	return &PolicyBuilder{p: &v1alpha1.SnugPolicy{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: Namespace, UID: types.UID("uid-" + name), Generation: 1,
		CreationTimestamp: metav1.NewTime(T0),
	}}}
}

// Namespace sets the policy's namespace.
func (b *PolicyBuilder) Namespace(ns string) *PolicyBuilder { b.p.Namespace = ns; return b }

// Created sets the policy's creation time.
func (b *PolicyBuilder) Created(t time.Time) *PolicyBuilder {
	b.p.CreationTimestamp = metav1.NewTime(t)
	return b
}

// Selector sets spec.selector's matchLabels (kv alternates keys and
// values).
func (b *PolicyBuilder) Selector(kv ...string) *PolicyBuilder {
	b.p.Spec.Selector = &metav1.LabelSelector{MatchLabels: pairs(kv)}
	return b
}

// Target sets spec.targetRef to the workload kind/name.
func (b *PolicyBuilder) Target(kind, name string) *PolicyBuilder {
	b.p.Spec.TargetRef = &v1alpha1.CrossVersionObjectReference{Kind: kind, Name: name}
	return b
}

// StatusSelector sets status.selector, as the controller publishes it.
func (b *PolicyBuilder) StatusSelector(s string) *PolicyBuilder { b.p.Status.Selector = s; return b }

// Mode sets updatePolicy.updateMode.
func (b *PolicyBuilder) Mode(m v1alpha1.UpdateMode) *PolicyBuilder {
	b.updatePolicy().UpdateMode = m
	return b
}

// MinReplicas sets updatePolicy.minReplicas.
func (b *PolicyBuilder) MinReplicas(n int32) *PolicyBuilder {
	b.updatePolicy().MinReplicas = ptr.To(n)
	return b
}

func (b *PolicyBuilder) updatePolicy() *v1alpha1.PodUpdatePolicy {
	if b.p.Spec.UpdatePolicy == nil {
		b.p.Spec.UpdatePolicy = &v1alpha1.PodUpdatePolicy{}
	}
	return b.p.Spec.UpdatePolicy
}

// Deferred sets behavior.deferred.
func (b *PolicyBuilder) Deferred(a v1alpha1.DeferredAction, afterSeconds int32) *PolicyBuilder {
	b.behavior().Deferred = &v1alpha1.DeferredBehavior{Action: a, AfterSeconds: ptr.To(afterSeconds)}
	return b
}

// Behavior sets spec.behavior.
func (b *PolicyBuilder) Behavior(bh v1alpha1.Behavior) *PolicyBuilder {
	b.p.Spec.Behavior = &bh
	return b
}

func (b *PolicyBuilder) behavior() *v1alpha1.Behavior {
	if b.p.Spec.Behavior == nil {
		b.p.Spec.Behavior = &v1alpha1.Behavior{}
	}
	return b.p.Spec.Behavior
}

// Container adds a containerPolicies entry.
func (b *PolicyBuilder) Container(cp v1alpha1.ContainerResourcePolicy) *PolicyBuilder {
	if b.p.Spec.ResourcePolicy == nil {
		b.p.Spec.ResourcePolicy = &v1alpha1.PodResourcePolicy{}
	}
	b.p.Spec.ResourcePolicy.ContainerPolicies = append(b.p.Spec.ResourcePolicy.ContainerPolicies, cp)
	return b
}

// Uncontrolled sets status.uncontrolledResources.
func (b *PolicyBuilder) Uncontrolled(r ...corev1.ResourceName) *PolicyBuilder {
	b.p.Status.UncontrolledResources = r
	return b
}

// Get returns the policy.
func (b *PolicyBuilder) Get() *v1alpha1.SnugPolicy { return b.p }
