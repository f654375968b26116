
*

llama3.1-8b€€@

	h100-94gb	fuzz seed