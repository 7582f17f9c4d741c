package conversion

import (
	"bytes"
	"encoding/json"
)

func encodeResponse(buf *bytes.Buffer, v *reviewResponse) error {
	return json.NewEncoder(buf).Encode(v)
}
