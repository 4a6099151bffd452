// +groupName=shop.example.com
// +kubebuilder:validation:Optional
// +kubebuilder:rbac:groups=shop.example.com,resources=widgets,verbs=get;list;watch
// +kubebuilder:webhook:path=/validate,mutating=false,failurePolicy=fail,groups=shop.example.com,resources=widgets,verbs=create,versions=v1,name=vw.example.com,sideEffects=None,admissionReviewVersions=v1
// +versionName=v1
// +k8s:openapi-gen=true
package v1
