Estimate


llama3.1-8b€€ 

	h100-80gb"
 (