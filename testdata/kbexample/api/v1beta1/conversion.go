// This file is yours: aagen created it once and never overwrites it.

package v1beta1

import (
	v1 "example.com/kbexample/api/v1"
	"k8s.io/apimachinery/pkg/conversion"
)

// Conversions between v1beta1 and v1, the storage version, that conversion-gen cannot write
// because fields were renamed, moved or changed type between the versions. The generated
// zz_generated.conversion.go calls each Convert_ function below; each starts with the
// generated autoConvert_ function, which copies every field that matches by name and type.
// Convert the fields named in the WARNING lines (conversion-gen's), then delete the
// TODO_convert_... line under them: it is there so that the package does not compile until
// you have. A field left out is lost when an object written in one version is read in the
// other. aagen generate lists the functions still missing.

// Convert_v1_GuestbookSpec_To_v1beta1_GuestbookSpec is written by hand: conversion-gen cannot convert every field.
func Convert_v1_GuestbookSpec_To_v1beta1_GuestbookSpec(in *v1.GuestbookSpec, out *GuestbookSpec, s conversion.Scope) error {
	if err := autoConvert_v1_GuestbookSpec_To_v1beta1_GuestbookSpec(in, out, s); err != nil {
		return err
	}
	// WARNING: in.Message requires manual conversion: does not exist in peer-type
	out.Motd = in.Message
	return nil
}

// Convert_v1beta1_GuestbookSpec_To_v1_GuestbookSpec is written by hand: conversion-gen cannot convert every field.
func Convert_v1beta1_GuestbookSpec_To_v1_GuestbookSpec(in *GuestbookSpec, out *v1.GuestbookSpec, s conversion.Scope) error {
	if err := autoConvert_v1beta1_GuestbookSpec_To_v1_GuestbookSpec(in, out, s); err != nil {
		return err
	}
	// WARNING: in.Motd requires manual conversion: does not exist in peer-type
	out.Message = in.Motd
	return nil
}
