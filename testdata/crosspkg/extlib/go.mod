module example.com/extlib

go 1.26.0
