package generator

import (
	"fmt"

	"github.com/aagen-dev/aagen/generator/model"
)

// clientMethods are the client-gen +genclient:method tag values of k's imperative
// subresources: <Name> for an action, Get<Name> and Update<Name> for a view. Streams and
// connections have no typed method (client-gen cannot express them): clients use the REST
// client's SubResource(...).Stream or client-go's websocket executor.
func clientMethods(k *model.Kind) []string {
	var out []string
	for _, s := range k.Subresources {
		switch s.Type {
		case model.Action:
			result := s.Answer(k.Name)
			if result == "Status" {
				result = "k8s.io/apimachinery/pkg/apis/meta/v1.Status"
			}
			out = append(out, fmt.Sprintf("%s,verb=create,subresource=%s,input=%s,result=%s", s.GoName(), s.Name, s.Input, result))
		case model.View:
			out = append(out, fmt.Sprintf("Get%s,verb=get,subresource=%s,result=%s", s.GoName(), s.Name, s.Object))
			if s.Writable {
				out = append(out, fmt.Sprintf("Update%s,verb=update,subresource=%s,input=%s,result=%s", s.GoName(), s.Name, s.Object, s.Object))
			}
		}
	}
	return out
}
