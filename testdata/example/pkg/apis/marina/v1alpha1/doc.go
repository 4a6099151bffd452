// Package v1alpha1 is version v1alpha1 of the marina.example.com API: boats and the
// docks they berth at.
//
// +groupName=marina.example.com
package v1alpha1
