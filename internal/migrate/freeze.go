package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// FreezeMessage starts the message of a write refused during the freeze.
const FreezeMessage = "writes to this API group are frozen while its objects move to their aggregated API server (aagen migrate)"

// freezeName names the ValidatingAdmissionPolicy and its binding that freeze group.
func freezeName(group string) string { return "aagen-migration-freeze." + group }

// Freeze refuses every create, update and delete of the group's resources and their
// subresources ("*/*") on the cluster (a ValidatingAdmissionPolicy whose only rule is false, and
// its binding with the action Deny), and returns once probe, a dry-run write, is refused
// with FreezeMessage: kube-apiserver loads policies asynchronously, so the freeze holds
// only from then on (with a nil probe, when the group has no object to probe with, it
// returns at once). Lift ends it whatever happened in between; a Freeze that fails lifts
// what it created itself.
//
// The policy holds wherever the group is served: kube-apiserver evaluates it for a CRD,
// and a generated server, whose admission chain has upstream's ValidatingAdmissionPolicy
// plugin, for its own resources. exempt are the users whose writes the freeze lets
// through (the migration's own: apply's removals on the server, the rollback's writes to
// the CRDs); a dry run is refused for everyone, exempt included, so that the same users can
// probe the freeze. A freeze left over from an earlier run is replaced by this one.
func Freeze(ctx context.Context, cfg *rest.Config, group string, probe func(context.Context) error, timeout time.Duration, exempt ...string) (err error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	name := freezeName(group)
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "aagen-migrate"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{"*/*"}},
				},
			}}},
			MatchConditions: exemption(exempt),
			Validations: []admissionregistrationv1.Validation{{
				Expression: "false",
				Message:    FreezeMessage + ": retry in a few seconds",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: policy.Labels},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	defer func() {
		if err != nil {
			if lerr := Lift(context.WithoutCancel(ctx), cfg, group); lerr != nil {
				err = errors.Join(err, lerr)
			}
		}
	}()
	policies := client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	if _, err := policies.Create(ctx, policy, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := policies.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec = policy.Spec
			_, err = policies.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("replacing the ValidatingAdmissionPolicy %s left by an earlier freeze: %w", name, err)
		}
	} else if err != nil {
		return fmt.Errorf("creating the freeze's ValidatingAdmissionPolicy %s: %w", name, err)
	}
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the freeze's ValidatingAdmissionPolicyBinding %s: %w", name, err)
	}
	if probe == nil {
		return nil
	}
	return awaitFrozen(ctx, group, probe, timeout)
}

// awaitFrozen waits until probe, a dry-run write, is refused with FreezeMessage.
func awaitFrozen(ctx context.Context, group string, probe func(context.Context) error, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = probe(ctx)
		return last != nil && strings.Contains(last.Error(), FreezeMessage), nil
	})
	if err != nil {
		return fmt.Errorf("the freeze of %s did not take hold within %v (the last probe write answered %v): %w", group, timeout, last, err)
	}
	return nil
}

// exemption is the freeze policy's match condition that lets the users' writes through,
// but not their dry runs (nil for no user).
func exemption(users []string) []admissionregistrationv1.MatchCondition {
	var quoted []string
	for _, u := range users {
		if u != "" && !slices.Contains(quoted, strconv.Quote(u)) {
			quoted = append(quoted, strconv.Quote(u))
		}
	}
	if len(quoted) == 0 {
		return nil
	}
	return []admissionregistrationv1.MatchCondition{{
		Name:       "not-the-migration",
		Expression: fmt.Sprintf("request.dryRun || !(request.userInfo.username in [%s])", strings.Join(quoted, ", ")),
	}}
}

// Lift deletes the freeze's binding and policy (those absent are fine).
func Lift(ctx context.Context, cfg *rest.Config, group string) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	name := freezeName(group)
	var errs []error
	if err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting the freeze's ValidatingAdmissionPolicyBinding %s: %w", name, err))
	}
	if err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting the freeze's ValidatingAdmissionPolicy %s: %w", name, err))
	}
	return errors.Join(errs...)
}
