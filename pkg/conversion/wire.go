package conversion

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The ConversionReview as it travels. apiextensions.k8s.io/v1 and v1beta1
// have the same JSON shape, so one pair of types serves both, and objects
// decode straight into maps in the same pass as the review: the typed
// apiextensions review would hold them as raw bytes, to be scanned and
// copied again.

const (
	reviewKind    = "ConversionReview"
	reviewV1      = "apiextensions.k8s.io/v1"
	reviewV1beta1 = "apiextensions.k8s.io/v1beta1"
)

type review struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Request    *request `json:"request"`
}

type request struct {
	UID               types.UID        `json:"uid"`
	DesiredAPIVersion string           `json:"desiredAPIVersion"`
	Objects           []map[string]any `json:"objects"`
}

// response is written by encodeResponse, not encoding/json.
type response struct {
	UID              types.UID
	ConvertedObjects []map[string]any // nil on failure: no partial answer
	Status           string           // metav1.StatusSuccess or metav1.StatusFailure
	Message          string
}

// decodeReview decodes and checks a request body. Numbers in objects
// become int64 when integral, as in unstructured objects everywhere else,
// so integers survive the round trip exactly.
func decodeReview(body []byte) (*review, error) {
	rv, err := decodeReviewJSON(body)
	if err != nil {
		return nil, fmt.Errorf("decoding ConversionReview: %w", err)
	}
	switch {
	case rv.APIVersion != reviewV1 && rv.APIVersion != reviewV1beta1:
		return nil, fmt.Errorf("unsupported ConversionReview apiVersion %q: want %s or %s", rv.APIVersion, reviewV1, reviewV1beta1)
	case rv.Kind != reviewKind:
		return nil, fmt.Errorf("kind is %q, want %s", rv.Kind, reviewKind)
	case rv.Request == nil:
		return nil, errors.New("ConversionReview has no request")
	case rv.Request.DesiredAPIVersion == "":
		return nil, errors.New("ConversionReview request has no desiredAPIVersion")
	}
	return rv, nil
}

func success(uid types.UID, objects []map[string]any) response {
	if objects == nil {
		objects = []map[string]any{} // [] not null: the API server counts them
	}
	return response{UID: uid, ConvertedObjects: objects, Status: metav1.StatusSuccess}
}

// failure carries no convertedObjects: the API server fails the whole
// request anyway, and a partial list would only invite misuse.
func failure(uid types.UID, err error) response {
	return response{UID: uid, Status: metav1.StatusFailure, Message: err.Error()}
}
