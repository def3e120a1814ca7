// Package controller is WVA's Kubernetes controller.
//
// +kubebuilder:rbac:groups=llmd.ai,resources=variantautoscalings,verbs=get;list;watch
// +kubebuilder:rbac:groups=llmd.ai,resources=variantautoscalings/status,verbs=get;update;patch
package controller
