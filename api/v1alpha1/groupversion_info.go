// Package v1alpha1 holds the VariantAutoscaling API, group llmd.ai,
// version v1alpha1: the API of the WVA repository
// (github.com/llm-d/llm-d-workload-variant-autoscaler), so that manifests
// written for it apply unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=llmd.ai
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of these types.
	GroupVersion = schema.GroupVersion{Group: "llmd.ai", Version: "v1alpha1"}

	// SchemeBuilder registers the types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this group and version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &VariantAutoscaling{}, &VariantAutoscalingList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
